import { describeCli } from "./suite.js";

describeCli("postgres");
