// What a DCP file opened alone lets one say (docs/distributed.md, "A DCP data file alone"): the
// core reports what was opened and which data files the index names; this module only words the
// verdict that follows, for the CLI and the viewer alike.

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
