import { runConformance } from "../helpers/conformance.js";
import { TEST_ENCRYPTION } from "./keys.js";

// LangGraph's conformance suite with every value sealed and no memory of opened values
// (cacheBytes: 0): every value read back is opened by the cipher, none served from memory.
runConformance("sqlite", { ...TEST_ENCRYPTION, cacheBytes: 0 });
