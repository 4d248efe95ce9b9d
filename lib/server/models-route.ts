/** GET /v1/models and /v1/models/{id}: the one model this server runs. */
import type { ServerResponse } from "node:http";

import { HttpError } from "./http-error.js";
import { sendJson } from "./respond.js";

export interface ModelEntry {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

export function modelEntry(id: string, created: number): ModelEntry {
  return { id, object: "model", created, owned_by: "llamapeg" };
}

export function listModels(res: ServerResponse, entry: ModelEntry): number {
  sendJson(res, 200, { object: "list", data: [entry] });
  return 200;
}

export function getModel(res: ServerResponse, entry: ModelEntry, id: string): number {
  if (id !== entry.id) throw new HttpError(404, "invalid_request_error", `the model ${JSON.stringify(id)} does not exist (this server runs ${JSON.stringify(entry.id)})`, { param: "model", code: "model_not_found" });
  sendJson(res, 200, entry);
  return 200;
}
