// A form for a question's answer (docs/protocol.md, Questions for a human), built from its JSON Schema: a person
// fills fields rather than writing JSON. Strings (a select when the schema lists `enum`), numbers and integers,
// booleans, and objects whose properties are of those kinds get fields; any other schema gets a JSON text box, so
// every answer can be given. The server checks the answer against the schema again: the form only helps.

import { h, pretty } from './dom.js';

const SCALARS = new Set(['string', 'number', 'integer', 'boolean']);

/** The one type a schema names (`type: "x"` or `["x", "null"]`), or undefined. */
function typeOf(schema) {
  if (Array.isArray(schema?.enum) && schema.enum.length > 0 && schema.enum.every((value) => typeof value === 'string')) return 'enum';
  const type = Array.isArray(schema?.type) ? schema.type.filter((t) => t !== 'null') : [schema?.type];
  return type.length === 1 ? type[0] : undefined;
}

const isScalar = (schema) => typeOf(schema) === 'enum' || SCALARS.has(typeOf(schema));
const isFlatObject = (schema) => typeOf(schema) === 'object' && schema.properties && Object.values(schema.properties).every(isScalar);

/** One field for a scalar schema: its element and how to read its value (undefined when left empty). */
function scalarField(schema, name) {
  const type = typeOf(schema);
  const testid = 'answer-field';
  if (type === 'boolean') {
    const input = h('input', { type: 'checkbox', testid, data: { field: name }, checked: schema.default === true });
    return { input, read: () => input.checked };
  }
  if (type === 'enum') {
    const input = h('select', { class: 'input', testid, data: { field: name } }, h('option', { value: '', text: '—' }), schema.enum.map((value) => h('option', { value, text: value })));
    return { input, read: () => (input.value === '' ? undefined : input.value) };
  }
  if (type === 'number' || type === 'integer') {
    const input = h('input', { class: 'input', type: 'number', step: type === 'integer' ? '1' : 'any', testid, data: { field: name } });
    return { input, read: () => (input.value.trim() === '' ? undefined : Number(input.value)) };
  }
  const input = h('input', { class: 'input', type: 'text', testid, data: { field: name } });
  return { input, read: () => input.value };
}

/** A labelled row: the property's name (and its description, when the schema has one) beside its field. */
const row = (name, schema, field, required) =>
  h('label', { class: 'answer-row' }, h('span', { class: 'label', text: `${schema.title ?? name}${required ? ' *' : ''}`, title: schema.description ?? '' }), field.input);

/** A JSON text box: for any schema the fields above cannot express. */
function jsonField(schema) {
  const input = h('textarea', { class: 'editor', spellcheck: false, rows: 4, testid: 'answer-json' });
  input.value = schema?.default === undefined ? '' : pretty(schema.default);
  return {
    nodes: [h('div', { class: 'muted small', text: 'Answer as JSON' }), input],
    read: () => {
      try {
        return { value: JSON.parse(input.value) };
      } catch (failure) {
        return { error: `Invalid JSON: ${failure.message}` };
      }
    },
  };
}

/** The fields of a schema and how to read the answer they hold: `{value}` or `{error}`. */
function fieldsOf(schema) {
  if (isFlatObject(schema)) {
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties).map(([name, property]) => ({ name, field: scalarField(property, name) }));
    return {
      nodes: fields.map(({ name, field }) => row(name, schema.properties[name], field, required.has(name))),
      read: () => {
        const value = {};
        for (const { name, field } of fields) {
          const read = field.read();
          if (read !== undefined) value[name] = read;
        }
        return { value };
      },
    };
  }
  if (isScalar(schema)) {
    const field = scalarField(schema, '');
    return { nodes: [field.input], read: () => ({ value: field.read() }) };
  }
  return jsonField(schema);
}

/**
 * The form of one question call: `node`, `read()` -> `{value}` or `{error}`, and `showIssues(issues)` for what the
 * server refused (details.answers of a 400), shown under the form.
 */
export function createQuestionForm(call) {
  const { nodes, read } = fieldsOf(call.answer_schema ?? {});
  const issues = h('div', { class: 'inline-error', testid: 'answer-error', role: 'alert', hidden: true });
  const node = h('div', { class: 'answer-form', testid: 'answer-form', data: { toolCallId: call.id } }, nodes, issues);
  return {
    node,
    read,
    showIssues(found) {
      issues.textContent = found ? (Array.isArray(found) ? found.join('\n') : pretty(found)) : '';
      issues.hidden = !found;
    },
  };
}

/** The forms of a pause's questions, and the `answers` body they make together (`{answers}` or `{error}`). */
export function createQuestionForms(calls) {
  const forms = calls.filter((call) => call.answer_schema !== undefined).map((call) => ({ call, form: createQuestionForm(call) }));
  return {
    forms,
    /** The form of a call, for the card to place under that call. */
    formOf: (id) => forms.find(({ call }) => call.id === id)?.form,
    collect() {
      const answers = {};
      for (const { call, form } of forms) {
        form.showIssues(undefined);
        const read = form.read();
        if (read.error) {
          form.showIssues(read.error);
          return { error: `The answer to ${call.name} is not valid JSON; nothing was sent.` };
        }
        answers[call.id] = read.value;
      }
      return { answers };
    },
    /** Places the server's issues (details.answers) under their forms; returns how many it placed. */
    showIssues(details) {
      let placed = 0;
      for (const { call, form } of forms) {
        const found = details?.answers?.[call.id];
        form.showIssues(found);
        if (found) placed += 1;
      }
      return placed;
    },
  };
}
