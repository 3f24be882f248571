// ckptscope: look inside TorchLean checkpoints: optimizer state (TLADAMF) and model state
// (TLSF32B, TLPF32B). One entry point for Node, browsers and workers; Node-only features load
// node:fs lazily. The API only: the viewer's and server's plumbing is ckptscope/plumbing
// (js/plumbing.js).
export { open, Checkpoint } from './checkpoint.js';
export { inspect, check, pair, diff, health, readEntry, entryStats, readerNames, withModelSlots, setKind } from './api.js';
export { workerCount } from './parallel.js';
export { writeCheckpoint, saveCheckpoint, writeState, saveState } from './write.js';
export { exportTensors, exportTo, saveExport, exportNpy } from './export.js';
export { Schema } from './schema.js';
export { convert, convertTo, convertToTorch, convertToTorchTo, consolidate, consolidateTo, convertToIds, convertToIdsTo } from './convert.js';
export { convertToDcp, convertToDcpTo } from './convert.js';
export { convertToUniversal, universalPlan, openUniversal } from './universal.js';
export { CheckpointError, LayoutError } from './errors.js';
export { loadCore } from './wasm.js';
export { toNumber, toBigInt } from './values.js';
export { readJsonSource, BlobSource } from './sources.js';
export { jsonKind, namesOf } from './layout.js';
export { positiveNumber } from './options.js';
export { weightsOnlyLines } from './weights-only.js';
export { HttpSource, HttpError } from './http-source.js';
export { run, runOrder, runFiles, largestStep, numberInName, stemOf, exportGradient, exportGradientTo, saveGradient, DEFAULT_RESIDUAL_LIMIT } from './run.js';
export { trainerFolder, trainerFolderRoles, trainerLayout, checkpointFolders, readTrainingArgs, readTrainerState } from './trainer-folder.js';
export { dcpAlone } from './dcp.js';
export { accelerateFolder, accelerateFolderRoles, accelerateCheckpoints, readRandomStates, accelerateJson } from './accelerate-folder.js';
