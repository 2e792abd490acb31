// The worker of worker mode with the threaded CPU module available (see threads.js): worker.js, plus the
// loader of wisp_core_mt*.
import { threading } from "./threading.js";
import { initThreaded } from "./threaded.js";
import "./worker.js";

threading.load = initThreaded;
