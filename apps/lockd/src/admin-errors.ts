import { STATUS_CODES } from "node:http";
import type { FastifyReply } from "fastify";

/** The error shape of every admin 4xx and 5xx: Fastify's own, with a stable `code`. */
export async function adminError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
): Promise<undefined> {
  await reply.code(status).send({ statusCode: status, code, error: STATUS_CODES[status], message });
  return undefined;
}
