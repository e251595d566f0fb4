/** A model reference as the config writes it, `provider/model` (the model id may hold more slashes). */
export function splitModelRef(ref: string): { provider: string; model: string } {
  const slash = ref.indexOf('/');
  return slash > 0 ? { provider: ref.slice(0, slash), model: ref.slice(slash + 1) } : { provider: ref, model: ref };
}
