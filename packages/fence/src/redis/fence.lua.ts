/**
 * The fence script: check, apply, advance, in one atomic step.
 *
 *   KEYS[1]       the resource's fence key
 *   KEYS[i + 1]   the key of batched command i
 *   ARGV[1]       the presented token, a canonical decimal u64
 *   ARGV[2]       the number of commands, then for each: name, required key type, argc, args...
 *
 * Replies {0, current} when stale (nothing written), {2, i, actualType} when command i would hit a
 * key of the wrong type (nothing written), {1, reply1, reply2, ...} when applied.
 *
 * Why this shape:
 * - Lua numbers are doubles and lose integers above 2^53, so a token is never one number: a shorter
 *   canonical decimal is smaller, and equal lengths compare as two exact numbers, the digits before
 *   the last 15 and the last 15 (each below 2^53). Not the string `<`: it is locale-dependent.
 * - No tables are built for the commands (two walks over ARGV instead): at a few microseconds a call,
 *   the script's own work is most of what a fenced write costs Redis over the bare command.
 * - Redis does not roll a script back after a failed redis.call, so everything checkable is checked
 *   before the first write (the key types here; command names and arity in JS), and the token is
 *   written last: a command that still fails mid-way leaves the token where it was.
 * - A holder usually writes many times with one token: the token is written only when it changes
 *   (one redis.call less per write, about a fifth of the script's cost).
 */
export const FENCE_LUA = `
local function lower(a, b)
  local n = #a
  if n ~= #b then return n < #b end
  if n <= 15 then return tonumber(a) < tonumber(b) end
  local cut = n - 15
  local ah, bh = tonumber(string.sub(a, 1, cut)), tonumber(string.sub(b, 1, cut))
  if ah ~= bh then return ah < bh end
  return tonumber(string.sub(a, cut + 1)) < tonumber(string.sub(b, cut + 1))
end

local presented = ARGV[1]
local current = redis.call('GET', KEYS[1])
if current and lower(presented, current) then
  return {0, current}
end

local count = tonumber(ARGV[2])
local at = 3
for i = 1, count do
  local keytype = ARGV[at + 1]
  if keytype ~= 'any' then
    local actual = redis.call('TYPE', KEYS[i + 1])['ok']
    if actual ~= 'none' and actual ~= keytype then
      return {2, i, actual}
    end
  end
  at = at + 3 + tonumber(ARGV[at + 2])
end

local replies = {1}
at = 3
for i = 1, count do
  local argc = tonumber(ARGV[at + 2])
  replies[i + 1] = redis.call(ARGV[at], KEYS[i + 1], unpack(ARGV, at + 3, at + 2 + argc))
  at = at + 3 + argc
end
if current ~= presented then redis.call('SET', KEYS[1], presented) end
return replies
`;
