export { FENCING_TOKEN_HEADER, fencingHeaders } from "../headers.js";
export { default, default as fencePlugin, fenceErrorBody } from "./plugin.js";
export type {
  FencedTx,
  FenceErrorBody,
  FencePluginOptions,
  FencePluginStore,
  FenceResourceFunction,
  FenceResourceRequest,
  FenceRouteConfig,
} from "./types.js";
