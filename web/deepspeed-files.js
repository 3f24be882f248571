// A DeepSpeed ZeRO checkpoint in the viewer (docs/deepspeed.md): its folder (a save_dir or a tag
// folder, picked, dropped or served by `ckptscope view DIR`) or its files dropped together are
// one checkpoint, laid out as one source in the worker by the package's folder bundle (the
// core's plan says which files it reads). A file alone is opened as itself: the core's note
// says which folder to open.

/** The path a file came with: a picked folder's relative path, a dropped folder's or a served
 *  file's name (which carries its path in the folder), else its name. */
const pathOf = (f) => f.webkitRelativePath || f.name;

/**
 * The files of one drop, pick or address read as a DeepSpeed checkpoint: {item: the checkpoint
 * to open ({name, source: {folder: [{path, source}]}}), rest: the files it does not read}, the
 * files it does not read said in `notices`; null when the files are not one (a single loose
 * file is never one: it is opened alone).
 */
export async function deepspeedFiles(rpc, files, notices) {
  const paths = files.map(pathOf);
  if (!files.length || (files.length === 1 && !paths[0].includes('/'))) return null;
  const folder = files.map((f, k) => ({ path: paths[k], source: f.source ?? f }));
  const found = await rpc.request('deepspeedFolder', { files: folder }).catch(() => null);
  if (!found) return null;
  // a distributed checkpoint (DCP, docs/distributed.md) reads its .metadata and the files it names
  const why = found.family === 'DCP' ? 'a distributed checkpoint reads its .metadata and the data files it names' : found.tag === null ? 'a DeepSpeed checkpoint dropped as files is read from its model states and optimizer partitions' : `the DeepSpeed checkpoint reads \`latest\` and the files of its tag folder ${found.tag}`;
  for (const k of found.unused) notices.push({ name: paths[k], text: `not used: ${why}.` });
  const name = found.root || found.members.join(' and ');
  return { item: { name, source: { folder } } };   // every file: the worker's listing is the same again
}
