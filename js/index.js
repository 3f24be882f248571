// ckptscope: inspect, validate and write TorchLean optimizer checkpoints (TLADAMF).
// One entry point for Node, browsers and workers; Node-only features load node:fs lazily.
export { inspect, check, diff, readEntry, entryStats, writeCheckpoint, saveCheckpoint, Schema } from './api.js';
export { CheckpointError, LayoutError } from './errors.js';
export { loadCore } from './wasm.js';
