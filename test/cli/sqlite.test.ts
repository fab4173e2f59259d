import { describeCli } from "./suite.js";

describeCli("sqlite");
