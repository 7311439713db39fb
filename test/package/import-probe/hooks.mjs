// Module hooks for probe.mjs: every URL an `import` resolves to is posted to the probe's thread.
let port;

export function initialize(data) {
  port = data.port;
  // A message from the probe asks for a reply once every earlier resolution has been posted.
  port.on('message', () => port.postMessage({ flushed: true }));
  port.unref();
}

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  port.postMessage({ url: result.url });
  return result;
}
