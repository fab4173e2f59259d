import { runConformance } from "../helpers/conformance.js";

runConformance("sqlite");
