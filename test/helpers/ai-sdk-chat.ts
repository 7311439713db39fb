import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type ChatState, type ChatStatus, type UIMessage } from 'ai';

/** `useChat`'s state, kept in plain fields: what React keeps in hooks, for a chat in Node. */
class PlainState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage): void => void this.messages.push(message);
  popMessage = (): void => void this.messages.pop();
  replaceMessage = (index: number, message: UIMessage): void => void (this.messages[index] = message);
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The `ai` package's own chat machinery (`AbstractChat` + `DefaultChatTransport`), as `useChat` drives it. */
export class NodeChat extends AbstractChat<UIMessage> {
  readonly plain: PlainState;
  readonly requests: unknown[] = [];
  constructor(api: string, id: string, options: { token?: string; stepMode?: boolean } = {}) {
    const state = new PlainState();
    const requests: unknown[] = [];
    super({
      id,
      state,
      transport: new DefaultChatTransport({
        api,
        ...(options.token === undefined ? {} : { headers: { authorization: `Bearer ${options.token}` } }),
        ...(options.stepMode === undefined ? {} : { body: { stepwise: { step_mode: options.stepMode } } }),
        fetch: (async (input: RequestInfo | URL, init?: RequestInit) => (requests.push(JSON.parse(String(init?.body))), fetch(input, init))) as typeof fetch,
      }),
      // As an app that answers approvals in the UI: the chat sends again once every approval is answered.
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    this.plain = state;
    this.requests = requests;
  }

  /** Resolves once the chat is ready again (its automatic follow-up requests included). */
  async settled(): Promise<void> {
    for (let i = 0; i < 400 && this.plain.status !== 'ready' && this.plain.status !== 'error'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** The tool parts of the last assistant message. */
  toolParts(): { type: string; toolCallId: string; state: string; approval?: { id: string }; output?: unknown; input?: unknown }[] {
    const last = [...this.plain.messages].reverse().find((message) => message.role === 'assistant');
    return (last?.parts ?? []).filter((part) => part.type.startsWith('tool-')) as never;
  }
}
