// An Accelerate save_state folder in lines (inspect's summary): its pairs, each with what reads
// it (the pair read marked), Accelerate's step from its random states, and its other files by
// role. Every fact is the core's reading (js/accelerate-folder.js); this module words it.

const ROLE_WORDS = {
  scheduler: 'scheduler', sampler: 'sampler', dataloaderState: 'dataloader state', scaler: 'GradScaler',
  customCheckpoint: 'custom object', randomStates: 'random states', deepspeedLatest: 'DeepSpeed latest tag',
  fsdpModelRank: 'FSDP rank file', optimizerRank: 'FSDP optimizer rank file',
};

const DISTRIBUTED = { fsdp: ' (FSDP)', deepspeed: ' (DeepSpeed)' };

/** The lines: `pair` the index read (null: none). */
export function accelerateLines(folder, pair) {
  const lines = [`Accelerate save_state folder ${folder.dir}${DISTRIBUTED[folder.distributed] ?? ''}`];
  for (const p of folder.pairs) {
    const mark = p.index === pair ? '*' : ' ';
    const what = p.reader === 'deepspeed' ? `${p.model}, DeepSpeed's tag folder (its optimizer and model)` : `${p.optimizer ?? '(no optimizer)'} with ${p.model ?? '(no model)'}`;
    lines.push(`${mark} pair ${p.index}: ${what}${p.note ? `: ${p.note}` : ''}`);
  }
  const states = folder.randomStates;
  if (states.length) {
    const step = folder.step === null ? 'not saved' : String(folder.step);
    lines.push(`  step ${step} (Accelerate's counter, ${states[0].name}; ${states.length} process${states.length === 1 ? '' : 'es'})`);
  }
  for (const s of states) if (s.error) lines.push(`  ${s.name}: ${s.error}`);
  const others = folder.files.filter((f) => ROLE_WORDS[f.role] && f.role !== 'randomStates').map((f) => `${f.name} (${ROLE_WORDS[f.role]})`);
  if (others.length) lines.push(`  also: ${others.join(', ')}`);
  const strays = folder.files.filter((f) => f.role === null).map((f) => f.name);
  if (strays.length) lines.push(`  not Accelerate's: ${strays.join(', ')}`);
  return lines;
}
