import { runDriverConformance } from "../helpers/conformance.js";

runDriverConformance("mysql2-connection");
