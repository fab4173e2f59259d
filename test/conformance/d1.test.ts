import { runDriverConformance } from "../helpers/conformance.js";

runDriverConformance("d1");
