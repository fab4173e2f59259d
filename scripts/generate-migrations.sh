#!/usr/bin/env bash
# Generates the next migration of every dialect from src/schema:
#   npm run generate -- <name>
# Released migrations are never edited: schema changes always become a new file.
# drizzle-kit cannot express PARTITION BY; a migration that creates a table must get
# its partition clause by hand (see migrations/pg/0000_init.sql).
set -euo pipefail
name=${1:?usage: npm run generate -- <migration-name>}
for dialect in pg mysql sqlite; do
  DIALECT=$dialect npx drizzle-kit generate --name "$name"
done
