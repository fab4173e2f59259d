import { runDriverConformance } from "../helpers/conformance.js";

runDriverConformance("pg-client");
