/**
 * Sets `key` as the newest entry of an insertion-ordered map and forgets the oldest past `limit`: a
 * memory of the most recently used, for what is kept only to answer sooner or better (resolved pauses,
 * recent runs, requests sent to a model), never for what must not be lost.
 */
export function keepNewest<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > limit) map.delete(map.keys().next().value as K);
}
