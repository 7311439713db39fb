/** What every reply must be: JSON, never a 5xx, an error body whenever it is not a 200. */
export function expectWellFormed(reply: { status: number; body: any }): void {
  expect(reply.status).toBeLessThan(500);
  expect(typeof reply.body).toBe('object');
  if (reply.status !== 200) {
    expect(reply.body.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }));
  }
}
