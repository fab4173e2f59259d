# Sourced by the server scripts: apt_install PACKAGE... installs Debian packages (as root).
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the packages from starting system-wide servers we do not use.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq "$@" >/dev/null
}
