// `node --import` entry: registers ts-loader.mjs.
import { register } from "node:module";

register("./ts-loader.mjs", import.meta.url);
