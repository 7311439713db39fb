/** `T` with its readonly fields writable: an object being completed where it was made. */
export type Writable<T> = { -readonly [K in keyof T]: T[K] };
