// ckptscope/plumbing: what the package's own viewer (web/) and server (js/server/) are built on,
// apart from the API (js/index.js): the read feed, the frames of a server pass, the packed
// statistics an item's pass computes and attaches, the choices the core offers a panel, and a
// Trainer folder's checkpoints given as files (the viewer's picked or served folders), and a
// DeepSpeed folder given as files laid out as one source.
export { itemCount, itemStatsPacked, attachPacked } from './checkpoint.js';
export { scanPacked } from './api.js';
export { Feed } from './feed.js';
export { Frames, unpackFrame, JSON_FRAME, PACKED_FRAME } from './pass-frames.js';
export { convertVersions, convertChoices } from './options.js';
export { applyKind, openTrainerCheckpoints, compareLogged } from './trainer-run.js';
export { folderListing, folderFamily, folderPlan, sourceText, BundleSource } from './folder-bundle.js';
