import { runDriverConformance } from "../helpers/conformance.js";
import { TEST_ENCRYPTION } from "./keys.js";

// LangGraph's conformance suite with every value sealed, on Cloudflare D1 (batch-only: no interactive transactions).
runDriverConformance("d1", TEST_ENCRYPTION);
