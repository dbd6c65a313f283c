export { FENCING_TOKEN_HEADER, fencingHeaders } from "../headers.js";
export {
  default,
  default as fencePlugin,
  type FenceErrorBody,
  type FencePluginOptions,
  type FenceRouteConfig,
  fenceErrorBody,
} from "./plugin.js";
