import { runConformance } from "../helpers/conformance.js";

runConformance("mysql");
