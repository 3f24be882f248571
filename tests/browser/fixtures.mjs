// Files and page helpers the viewer's feature suites share: a model config, entries, a
// Llama-like layout with long names and a tie, and text waits.

export const config = { kind: 'adamw', beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
export const size = (s) => s.reduce((a, b) => a * b, 1);
export const entry = (id, shape, step = 10) => ({ id, step, m: new Float32Array(size(shape)).fill(0.001 * (id + 1)), v: new Float32Array(size(shape)).fill(1e-4) });

/** A 200-slot Llama-like model: long names sharing prefixes, the output head tied to the embedding. */
export function llama(layers = 39) {
  const names = ['model.embed_tokens.weight'], shapes = [[32, 8]];
  for (let l = 0; l < layers; l++) {
    for (const p of ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj']) {
      names.push(`model.layers.${l}.${p}.weight`);
      shapes.push([8, 8]);
    }
  }
  names.push('model.norm.weight', 'model.norm.bias', 'model.rotary.inv_freq', 'lm_head.weight');
  shapes.push([8], [8], [4], [32, 8]);
  const n = shapes.length;
  const requiresGrad = shapes.map((_, i) => i !== n - 2);
  const representatives = shapes.map((_, i) => (i === n - 2 ? null : i === n - 1 ? 0 : i));
  const entries = shapes.map((s, i) => (representatives[i] === i ? entry(i, s) : null)).filter(Boolean);
  return { names, description: { shapes, requiresGrad, representatives, config, randomCounter: 7, entries } };
}

export const text = (page, sel) => page.textContent(sel);
export const waitText = (page, sel, want) => page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.textContent === want, { sel, want });
