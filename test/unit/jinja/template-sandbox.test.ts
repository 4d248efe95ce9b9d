// No sandbox escape: a template reaches only the values the chat context gives it. The known
// Jinja/Python server-side template injection payloads and JavaScript prototype tricks, tried on
// every kind of value a template can hold, either fail with a LlamapegError or print nothing
// from the host; and no render changes a prototype.
import { describe, expect, it } from "vitest";

import { renderChatTemplate } from "../../../lib/chat/apply/render.js";
import { renderTemplate } from "../../../lib/jinja/index.js";
import { LlamapegError } from "../../../lib/errors.js";

// receivers: every kind of value (literals, context data, builtins, loop state, undefined)
const RECEIVERS = [
  "''", "'abc'", "[]", "[1, 2]", "{}", "{'a': 1}", "1", "1.5", "true", "none", "x_undefined", "messages", "messages[0]",
  "messages[0].content", "range", "namespace", "namespace(a=1)", "raise_exception", "tojson", "strftime_now", "loop", "self",
  "cycler", "joiner", "lipsum", "config", "request", "caller",
];
// properties: Python object internals, JS prototype internals, JS methods that would call into JS
const PROPERTIES = [
  "__class__", "__mro__", "__subclasses__", "__globals__", "__init__", "__builtins__", "__dict__", "__base__", "__import__",
  "constructor", "__proto__", "prototype", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf", "__defineGetter__",
  "__lookupGetter__", "call", "apply", "bind", "then", "charCodeAt", "toUpperCase", "map", "eval", "process", "require",
];
// whole payloads seen in the wild (HackTricks' Jinja2 SSTI list, Node template injection write-ups)
const PAYLOADS = [
  "{{ ''.__class__.__mro__[1].__subclasses__() }}",
  "{{ ''.__class__.__base__.__subclasses__()[40]('/etc/passwd').read() }}",
  "{{ config.__class__.__init__.__globals__['os'].popen('id').read() }}",
  "{{ self.__init__.__globals__.__builtins__.__import__('os').popen('id').read() }}",
  "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
  "{{ joiner.__init__.__globals__.os.popen('id').read() }}",
  "{{ lipsum.__globals__['os'].popen('id').read() }}",
  "{{ namespace.__init__.__globals__.os.popen('id').read() }}",
  "{{ request.application.__globals__.__builtins__.__import__('os').popen('id').read() }}",
  "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
  "{{ ''.constructor.constructor('return process')().mainModule.require('child_process').execSync('id') }}",
  "{{ range.constructor('return process')() }}",
  "{{ [].constructor.constructor('return this')() }}",
  "{{ messages.constructor.constructor('return globalThis')() }}",
  "{{ tojson.call(none, messages) }}",
  "{{ raise_exception.apply(none, ['x']) }}",
  "{{ namespace.prototype }}",
  "{{ (1).constructor }}",
  "{{ messages[0]['__proto__'] }}",
  "{{ messages|attr('constructor') }}",
  "{{ messages.__defineGetter__('x', range) }}",
  "{{ process.mainModule.require('fs').readFileSync('/etc/passwd') }}",
  "{{ require('child_process').execSync('id') }}",
  "{{ globalThis.process.env }}",
  "{{ this }}",
  "{{ eval('1+1') }}",
  "{{ Function('return process')() }}",
  "{% set x = {} %}{% set x.__proto__ = {'polluted': 'yes'} %}{{ x.polluted }}",
  "{% set ns = namespace(__proto__={'polluted': 'yes'}) %}{{ ns.polluted }}",
  "{% set ns = namespace() %}{% set ns.constructor = 1 %}{% set ns.__proto__ = 1 %}{{ ns.constructor }}",
  "{% set d = {'__proto__': {'polluted': 'yes'}, 'constructor': {'prototype': {'polluted': 'yes'}}} %}{{ d.polluted }}{{ d.constructor.prototype.x }}",
  "{% for k, v in {}.__proto__.items() %}{{ k }}{% endfor %}",
  "{{ messages.__proto__.__proto__.polluted }}",
  "{% macro constructor() %}x{% endmacro %}{{ constructor() }}{{ {}.constructor }}",
  "{% set __proto__ = {'polluted': 'yes'} %}{{ polluted }}",
];

const messages = JSON.parse('[{"role": "user", "content": "hi", "__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}]') as unknown[];

function attempts(): string[] {
  const out: string[] = [...PAYLOADS];
  for (const r of RECEIVERS)
    for (const p of PROPERTIES) {
      out.push(`{{ (${r}).${p} }}`, `{{ (${r})['${p}'] }}`, `{{ (${r}).${p}() }}`, `{{ (${r}) | ${p} }}`);
    }
  return out;
}

/** What a host object would look like if one leaked into the output. */
const LEAK = /native code|function|=>|\[object|process|globalThis|mainModule|child_process|uid=|root:|polluted|yes/i;

describe("template sandbox", () => {
  const all = attempts();
  it(`${all.length} escape attempts: each fails with a LlamapegError or prints nothing of the host`, () => {
    const protoBefore = Object.getOwnPropertyNames(Object.prototype).sort();
    const arrayProtoBefore = Object.getOwnPropertyNames(Array.prototype).sort();
    let failed = 0;
    let rendered = 0;
    for (const src of all) {
      let out: string;
      try {
        out = renderTemplate(src, { messages });
        rendered++;
      } catch (e) {
        expect(e, src).toBeInstanceOf(LlamapegError);
        failed++;
        continue;
      }
      // The message's own "__proto__" and "constructor" keys are data (JSON.parse makes them own
      // properties); printing that data back is Jinja's behaviour, not a leak of the host.
      const hostOnly = out.replaceAll("{'polluted': 'yes'}", "").replaceAll("{'prototype': }", "");
      expect(hostOnly, src).not.toMatch(LEAK);
    }
    // both outcomes happen: the attempts reach the evaluator, they are not all syntax errors
    expect(failed).toBeGreaterThan(100);
    expect(rendered).toBeGreaterThan(100);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoBefore);
    expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(arrayProtoBefore);
  });

  it("keys named like prototype internals are plain data", () => {
    const data = JSON.parse('{"__proto__": "p", "constructor": "c", "toString": "t", "hasOwnProperty": "h"}') as Record<string, unknown>;
    expect(renderTemplate("{{ d.__proto__ }}|{{ d['constructor'] }}|{{ d.toString }}|{{ d.hasOwnProperty }}|{{ d | length }}", { d: data })).toBe("p|c|t|h|4");
    expect(renderTemplate("{% for k in d %}{{ k }},{% endfor %}", { d: data })).toBe("__proto__,constructor,toString,hasOwnProperty,");
  });

  it("the chat path sees the same sandbox (message fields named like internals)", () => {
    const out = renderChatTemplate("{% for m in messages %}{{ m.role }}:{{ m.content }}|{{ m.constructor }}|{{ m.__proto__ }}{% endfor %}", { messages });
    expect(out).toBe("user:hi||");
  });
});
