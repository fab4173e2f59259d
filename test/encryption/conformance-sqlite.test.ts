import { runConformance } from "../helpers/conformance.js";
import { TEST_ENCRYPTION } from "./keys.js";

// LangGraph's conformance suite with every value sealed, through fromUrl's default driver.
runConformance("sqlite", TEST_ENCRYPTION);
