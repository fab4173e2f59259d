import { runDriverConformance } from "../helpers/conformance.js";
import { TEST_ENCRYPTION } from "./keys.js";

// LangGraph's conformance suite with every value sealed, on a drizzle database made with pg-pool.
runDriverConformance("pg-pool", TEST_ENCRYPTION);
