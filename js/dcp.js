// What a DCP file opened alone lets one say (docs/distributed.md, "A DCP data file alone"): the
// core reports what was opened and which data files the index names; this module only words the
// verdict that follows, for the CLI and the viewer alike. And the names a folder gives its slots.

/**
 * Why a report of a DCP file opened alone is no all-clear, or null: a data file without its
 * index, or an index whose data files are not beside it (the records' checks need both). Its
 * verdict is "cannot tell" (the CLI's exit status 3). `report`: a report or summary with the
 * core's `dcp` member.
 */
export function dcpAlone(report) {
  const d = report?.dcp;
  if (d?.opened === 'distcp') return 'a data file alone: open its folder';
  if (d?.opened === 'metadata' && d.files.length) return 'the index alone: its data files are not here';
  return null;
}

/** The names of a report's slots when its checkpoint names them itself: a DeepSpeed folder's
 *  (its module's, the core's `names`) or a DCP folder's (its FQNs, one `dcp.entries` row per
 *  slot); else null. */
export function ownSlotNames(report) {
  if (report?.names) return report.names;
  const d = report?.dcp;
  return d?.opened === 'folder' && d.entries.length ? d.entries.map((e) => e.name) : null;
}
