// The threaded module's thread pool starts Web Workers from its own module chunk, which must be an ES
// module: Vite's default worker format (iife) cannot be imported.
export default { worker: { format: "es" } };
