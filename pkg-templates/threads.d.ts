// `import "wisp-agent/threads"`: worker-mode models may run the CPU backend on several threads (in a
// cross-origin isolated page). It exports nothing.
export {};
