/**
 * The id of a run's model message (docs/glossary.md, inference): `<inference_id>:<n>`, where n counts
 * the run's inferences from 1 and goes on after a restart, so every instance and every later reading
 * of the log names an inference alike. Made here alone: the loop names its inferences with it, and
 * whoever reads a log back numbers them the same way.
 */
export function messageId(inferenceId: string, n: number): string {
  return `${inferenceId}:${n}`;
}
