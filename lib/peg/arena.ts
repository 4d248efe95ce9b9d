/**
 * `PegArena`: an immutable parser tree (nodes in one array, named rules, a root), the TypeScript twin of
 * llama.cpp's `common_peg_arena`. Build one with `buildPegParser()` / `pegBuilder()`, or load one
 * serialized by either implementation with `PegArena.fromJSON()`.
 */
import { LlamapegError } from "../errors.js";
import { type GrammarBuilder, type JsonWhitespace, type SchemaMode, type SchemaWarning, type UnsupportedMode, buildGrammar } from "../json-schema/index.js";
import { dumpNode } from "./dump.js";
import { buildArenaGrammar } from "./gbnf.js";
import { type PegNode, type PegNodeId, INVALID_NODE_ID } from "./nodes.js";
import { CompiledParser, IncrementalSession, type PegParseOptions, type PegParseResult } from "./parse.js";
import { type PegArenaJson, arenaFromJson, arenaToJson } from "./serialize.js";

export class PegArena {
  /** Parser nodes, addressed by id. */
  readonly nodes: readonly PegNode[];
  /** Rule name -> id of its `rule` node. */
  readonly rules: ReadonlyMap<string, PegNodeId>;
  /** Id of the root parser, or -1 when none is set. */
  readonly root: PegNodeId;
  private compiled: CompiledParser | undefined;

  constructor(nodes: readonly PegNode[], rules: ReadonlyMap<string, PegNodeId>, root: PegNodeId) {
    this.nodes = Object.freeze(nodes.slice());
    this.rules = new Map(rules);
    this.root = root;
  }

  /** Loads an arena from the JSON shape of `common_peg_arena::to_json()` (an object or its text). */
  static fromJSON(json: unknown): PegArena {
    const { nodes, rules, root } = arenaFromJson(json);
    return new PegArena(nodes, rules, root);
  }

  /** The JSON shape of `common_peg_arena::to_json()`: `{parsers, rules, root}`. */
  toJSON(): PegArenaJson {
    return arenaToJson(this.nodes, this.rules, this.root);
  }

  get size(): number {
    return this.nodes.length;
  }

  /** Id of the rule node named `name`; throws when there is none. */
  getRule(name: string): PegNodeId {
    const id = this.rules.get(name);
    if (id === undefined) throw new LlamapegError("ERR_PEG_INVALID", `rule not found: ${name}`, { where: `rules/${name}` });
    return id;
  }

  hasRule(name: string): boolean {
    return this.rules.has(name);
  }

  /**
   * Parses UTF-8 input (a string is encoded first; positions are always byte offsets).
   * With `partial: true` the input may be a prefix of a longer text: the result is `need_more_input`
   * where the grammar wants more, and the AST built so far comes back with partial nodes marked.
   */
  parse(input: string | Uint8Array, options: PegParseOptions = {}): PegParseResult {
    if (this.root === INVALID_NODE_ID) throw new LlamapegError("ERR_PEG_INVALID", "no root parser set", { where: "root" });
    return this.parseFrom(this.root, input, options);
  }

  /** Parses with the parser `id` as the root. */
  parseFrom(id: PegNodeId, input: string | Uint8Array, options: PegParseOptions = {}): PegParseResult {
    if (!Number.isInteger(id) || id < 0 || id >= this.nodes.length) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `no parser with id ${id}`, { where: "id" });
    }
    this.compiled ??= new CompiledParser(this.nodes, this.rules);
    return this.compiled.parse(id, input, options);
  }

  /**
   * A parser for a growing input (streaming model output). Each `parse(bytesSoFar, options)` gives
   * exactly what `arena.parse` gives, but when the input extends the previous one (same bytes in
   * front, same options) it reuses every memoized rule result that did not depend on where the old
   * input ended, so a completed tool call or JSON member is not parsed again.
   */
  streamParser(): PegStreamParser {
    return new PegStreamParser(this, () => (this.compiled ??= new CompiledParser(this.nodes, this.rules)));
  }

  /** Writes this arena's rules into a grammar builder (the reference's `build_grammar(builder, lazy)`). */
  buildGrammar(builder: GrammarBuilder, lazy = false): void {
    buildArenaGrammar(this, builder, lazy);
  }

  /**
   * GBNF for this arena. `lazy`: only the trigger rules (and what they reach), with `root` their
   * alternation, for grammars that activate on a trigger. `resolveRefs`: JSON schemas whose `$ref`s
   * are registered first (as chat.cpp does with the tools' parameters, so schema nodes that point
   * into them resolve). `dotall`: `.` in schema patterns matches line breaks.
   */
  toGbnf(
    options: {
      lazy?: boolean;
      resolveRefs?: readonly unknown[];
      dotall?: boolean;
      /** How schema nodes treat keywords the grammar cannot enforce (default "error"; see docs/json-schema.md). */
      unsupported?: UnsupportedMode;
      /** Receives the warnings of `unsupported: "ignore"`. */
      warnings?: SchemaWarning[];
      /** The schema compiler for schema nodes (default "reference", llama.cpp's text; chat plans use "default" outside reference_mode). */
      schemaMode?: SchemaMode;
      /** JSON whitespace in the default schema mode (json-schema/layout.ts; default "canonical"). */
      jsonWhitespace?: JsonWhitespace;
    } = {},
  ): string {
    return buildGrammar(
      (b) => {
        for (const schema of options.resolveRefs ?? []) b.resolveRefs(structuredClone(schema));
        this.buildGrammar(b, options.lazy === true);
      },
      {
        dotall: options.dotall === true,
        ...(options.unsupported === undefined ? {} : { unsupported: options.unsupported }),
        ...(options.warnings === undefined ? {} : { warnings: options.warnings }),
        ...(options.schemaMode === undefined ? {} : { schemaMode: options.schemaMode }),
        ...(options.jsonWhitespace === undefined ? {} : { jsonWhitespace: options.jsonWhitespace }),
      },
    );
  }

  /** One-line description of the subtree at `id` (default: the root), as the reference's `dump()`. */
  dump(id: PegNodeId = this.root): string {
    return dumpNode(this.nodes, id);
  }
}

/** See `PegArena.streamParser()`. */
export class PegStreamParser {
  private readonly session = new IncrementalSession();
  private readonly arena: PegArena;
  private readonly compiled: () => CompiledParser;

  /** @internal */
  constructor(arena: PegArena, compiled: () => CompiledParser) {
    this.arena = arena;
    this.compiled = compiled;
  }

  /** Parses the input so far; `options` as for `PegArena.parse` (normally `{partial: true}`). */
  parse(input: string | Uint8Array, options: PegParseOptions = {}): PegParseResult {
    if (this.arena.root === INVALID_NODE_ID) throw new LlamapegError("ERR_PEG_INVALID", "no root parser set", { where: "root" });
    return this.compiled().parseIncremental(this.session, this.arena.root, input, options);
  }

  /**
   * Parses the previous input followed by `piece` (a stream fed piece by piece): the same result as
   * `parse(previous + piece)`, without comparing the previous input again, so the cost does not grow
   * with its length. The input parsed is `result.ast.input`; after `reset()` the previous input is empty.
   */
  extend(piece: Uint8Array, options: PegParseOptions = {}): PegParseResult {
    if (this.arena.root === INVALID_NODE_ID) throw new LlamapegError("ERR_PEG_INVALID", "no root parser set", { where: "root" });
    return this.compiled().extendIncremental(this.session, this.arena.root, piece, options);
  }

  /** Forgets the previous input (the next parse starts from scratch). */
  reset(): void {
    this.session.forget();
  }
}
