import { describeCli } from "./suite.js";

describeCli("mysql");
