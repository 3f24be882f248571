// torch.load(weights_only=True) by torch release, in words: the lines the CLI prints and the
// viewer shows, from a torch.save report's `weightsOnlyBy` (the core's verdicts, format.md 10.2).

/** One line a release or range of releases: yes, no, or cannot tell (a range whose bounds
 *  disagree), with where it stops and the core's reason. */
export function weightsOnlyLines(by) {
  return by.map((v) => (v.loads ? `torch ${v.torch}: yes`
    : `torch ${v.torch}: ${v.loads === false ? 'no' : 'cannot tell'}, ${v.opcode} at byte ${v.byte} of ${JSON.stringify(v.member)}: ${v.reason}`));
}
