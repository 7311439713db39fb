/**
 * Who may read and steer a conversation (docs/protocol.md, Auth): the user who made it, or anyone on a
 * server without auth (no user) or for a conversation that names no one.
 */
export function mayAccess(user: string | undefined, owner: string | undefined): boolean {
  return user === undefined || owner === undefined || owner === user;
}
