// Templates: the attack templates (hangs, memory bombs, V8 fatal errors, deep recursion and
// nesting, quadratic lexing), the known sandbox-escape payloads, and random template text, each
// rendered through the chat path with the default budgets.
import { renderChatTemplate } from "../../lib/chat/apply/render.js";
import { mulberry32 } from "../../lib/test-model/random.js";
import type { FuzzClass } from "./classes.js";

interface TemplateCase {
  name: string;
  source: string;
}

const ATTACKS: [string, string][] = [
  ["range(10^6) loop", "{% for i in range(1000000) %}{{ i }}{% endfor %}"],
  ["nested loops 10^10", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"],
  ["range(10^9)", "{{ range(1000000000) | length }}"],
  ["V8 fatal: 'a'*134217729 | replace", "{{ ('a' * 134217729) | replace('a', 'b') }}"],
  ["'a' * 2^31", "{{ 'a' * 2147483647 }}"],
  ["replace('', big)", "{{ ('a' * 100000) | replace('', 'b' * 100000) }}"],
  ["string doubling", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}"],
  ["array doubling", "{% set ns = namespace(a=[1]) %}{% for i in range(64) %}{% set ns.a = ns.a + ns.a %}{% endfor %}"],
  ["append loop", "{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% for j in range(100) %}{% set _ = ns.a.append(j) %}{% endfor %}{% endfor %}"],
  ["many big strings kept", "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set _ = ns.l.append(('x' * 10000000) ~ i) %}{% endfor %}"],
  ["unbounded macro recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"],
  ["mutual macro recursion", "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}"],
  ["exponential macro", "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"],
  ["caller recursion", "{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{% call m() %}{{ m() }}{% endcall %}{% endcall %}"],
  ["self-containing list", "{% set a = [] %}{% set _ = a.append(a) %}{{ a }}"],
  ["self-containing dict tojson", "{% set d = namespace(x=1) %}{% set d.x = d %}{{ d | tojson }}"],
  ["deep list built in a loop", "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}"],
  ["DAG of 2^60 paths", "{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x | tojson }}"],
  ["deep brackets", "{{ " + "(".repeat(50000) + "1" + ")".repeat(50000) + " }}"],
  ["deep lists", "{{ " + "[".repeat(50000) + "]".repeat(50000) + " }}"],
  ["deep ifs", "{% if true %}".repeat(20000) + "x" + "{% endif %}".repeat(20000)],
  ["long addition chain", "{{ " + Array(100000).fill("1").join(" + ") + " }}"],
  ["long filter chain", "{{ 'x'" + " | upper".repeat(50000) + " }}"],
  ["long member chain", "{{ x" + ".y".repeat(50000) + " }}"],
  ["not not not ...", "{{ " + "not ".repeat(50000) + "true }}"],
  ["1 MB of whitespace (quadratic lexer regex)", "{{ x }}" + " ".repeat(1 << 20) + "y"],
  ["1 MB of whitespace before a generation tag", " ".repeat(1 << 20) + "{% generation %}x{% endgeneration %}"],
  ["4 MB template text", "x".repeat(4 << 20)],
  ["sort of a big list", "{% set a = range(900000) | list %}{% for i in range(1000) %}{% set b = a | sort %}{% endfor %}"],
  ["tojson of a big list", "{% set a = range(900000) | list %}{% for i in range(1000) %}{% set b = a | tojson %}{% endfor %}"],
  ["indent of huge width", "{{ 'a\\nb' | indent(1000000000) }}"],
  ["tojson huge indent", "{{ [[[[1]]]] | tojson(indent=100000000) }}"],
  ["strftime bomb", "{% for i in range(1000000) %}{{ strftime_now('%c' * 1000) }}{% endfor %}"],
  ["join of a huge list", "{{ (range(900000) | list) | join('x' * 1000) }}"],
  ["split a huge string", "{% for i in range(1000) %}{% set p = ('a,' * 5000000).split(',') %}{% endfor %}"],
  ["dict with big keys", "{% set ns = namespace(d={}) %}{% set k = 'k' * 1000000 %}{% for i in range(100000) %}{% set ns.d = {k ~ i: 1} %}{% endfor %}"],
  ["string compare in a loop", "{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{% if s == s ~ '' %}{% endif %}{% endfor %}"],
  ["probe-only hang", "{% if messages | length == 5 %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif %}{{ messages[0].content }}"],
  ["raise in a loop", "{% for m in messages %}{{ raise_exception('no: ' ~ m.content) }}{% endfor %}"],
  ["loop over a huge dict", "{% set ns = namespace(d={}) %}{% for i in range(900000) %}{% set _ = ns.d.update({i: i}) if false %}{% endfor %}{% for k, v in ns.d.items() %}{% endfor %}"],
];

const ESCAPES = [
  "{{ ''.__class__.__mro__[1].__subclasses__() }}",
  "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
  "{{ ''.constructor.constructor('return process')().exit(1) }}",
  "{{ range.constructor('return process')().exit(1) }}",
  "{% set x = {} %}{% set x.__proto__ = {'polluted': 1} %}{{ x.polluted }}",
  "{{ messages.__proto__.constructor.prototype }}",
  "{{ tojson.call(none, messages) }}",
  "{{ require('child_process').execSync('id') }}",
];

const FRAGMENTS = [
  "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", " if ", " for ", " in ", " endif ", " endfor ", " else ", " elif ", " set ", " macro ",
  " endmacro ", " call ", " endcall ", " filter ", " endfilter ", " x ", " messages ", " m ", "[0]", "[-1]", ".content", ".role", " | ", "tojson", "length",
  "upper", "trim", "join(',')", "split(' ')", "replace('a','b')", "(", ")", "[", "]", "'a'", '"b"', "1", "2.5", "-3", " + ", " ~ ", " * ", " / ", " == ",
  " and ", " or ", " not ", " is ", "defined", "none", " = ", ",", ":", "{", "}", "raise_exception('x')", "range(3)", "range(100000)", "namespace(a=1)",
  "loop.index", "loop.last", "caller()", "\n", " ", "text", "<|im_start|>", "🙂", "\\", "'", '"',
];

function randomTemplate(rng: () => number): string {
  const n = 1 + Math.floor(rng() * 40);
  let s = "";
  for (let i = 0; i < n; i++) s += FRAGMENTS[Math.floor(rng() * FRAGMENTS.length)];
  return s;
}

export const fuzzClass: FuzzClass<TemplateCase> = {
  cases(seed, size) {
    const rng = mulberry32(seed);
    const out: TemplateCase[] = ATTACKS.map(([name, source]) => ({ name: `attack: ${name}`, source }));
    out.push(...ESCAPES.map((source, i) => ({ name: `escape ${i}`, source })));
    const random = size === "long" ? 5000 : 200;
    for (let i = 0; i < random; i++) out.push({ name: `random ${i}`, source: randomTemplate(rng) });
    return out;
  },
  describe: (c) => c.name,
  run(c) {
    const prompt = renderChatTemplate(c.source, {
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "hi <|im_start|>" },
      ],
    });
    return { length: prompt.length };
  },
};
