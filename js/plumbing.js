// ckptscope/plumbing: what the package's own viewer (web/) and server (js/server/) are built on,
// apart from the API (js/index.js): the read feed, the frames of a server pass, the packed
// statistics an item's pass computes and attaches, and the choices the core offers a panel.
export { itemCount, itemStatsPacked, attachPacked } from './checkpoint.js';
export { scanPacked } from './api.js';
export { Feed } from './feed.js';
export { Frames, unpackFrame, JSON_FRAME, PACKED_FRAME } from './pass-frames.js';
export { convertVersions, convertChoices } from './options.js';
