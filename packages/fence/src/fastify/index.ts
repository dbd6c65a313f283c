export {
  FENCING_MODE_HEADER,
  FENCING_SLOT_HEADER,
  FENCING_TOKEN_HEADER,
  type FencingHeaders,
  fencingHeaders,
} from "../headers.js";
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
