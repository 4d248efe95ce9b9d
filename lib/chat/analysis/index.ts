/** Template analysis: the public surface of lib/chat/analysis. */
export { analyzeTemplate, clearTemplateAnalysisCache, type AnalyzeTemplateOptions } from "./analyze.js";
export { withOverrides } from "./overrides.js";
export { CORRECTION_NAMES } from "./corrections.js";
export { isContentAlwaysWrapped } from "./types.js";
export type {
  CallIdPosition,
  ContentAnalysis,
  ContentMode,
  ProbeFailure,
  ReasoningAnalysis,
  ReasoningMode,
  TemplateAnalysis,
  TemplateAnalysisOverrides,
  TemplateCaps,
  ToolArgumentsAnalysis,
  ToolSyntax,
  ToolSyntaxAnalysis,
  ToolFunctionAnalysis,
  ToolIdAnalysis,
  ToolsAnalysis,
} from "./types.js";
