import { runDriverConformance } from "../helpers/conformance.js";

runDriverConformance("pglite");
