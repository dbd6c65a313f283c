/**
 * The fence scripts: check, apply, advance, in one atomic step each, for writes (FENCE_LUA) and reads
 * (FENCE_READ_LUA).
 *
 *   KEYS[1]       the resource's fence key
 *   KEYS[i + 1]   the key of batched command i
 *   ARGV[1]       the presented token, a canonical decimal u64
 *   ARGV[2]       reads: "1" to record the read, "0" not to; writes: unused
 *   ARGV[3]       the number of commands, then for each: name, required key type, argc, args...
 *
 * The fence key holds the resource's marks (rule.ts): the highest accepted write's token, followed,
 * when a read was recorded since, by a comma and the highest such read's token: "34", "34,40", or
 * ",40" for a resource only read so far. A value without a comma is what @lock/fence 0.1 wrote.
 *
 * Replies {0, current} when below the write mark, {3, read} when a write is below the read mark
 * (nothing written either way), {2, i, actualType} when write command i would hit a key of the wrong
 * type (nothing written), {1, reply1, reply2, ...} when applied.
 *
 * Why this shape:
 * - Lua numbers are doubles and lose integers above 2^53, so a token is never one number: a shorter
 *   canonical decimal is smaller, and equal lengths compare as two exact numbers, the digits before
 *   the last 15 and the last 15 (each below 2^53). Not the string `<`: it is locale-dependent.
 * - Both marks in one key: no second key to declare, to keep in the resource's Cluster hash slot, or
 *   to read; a write, which clears the read mark, still sets one value.
 * - No tables are built for the commands (two walks over ARGV instead): at a few microseconds a call,
 *   the script's own work is most of what a fenced write costs Redis over the bare command.
 * - Redis does not roll a script back after a failed redis.call, so everything checkable is checked
 *   before the first write (the key types here; command names and arity in JS), and the marks are
 *   written last: a command that still fails mid-way leaves them where they were.
 * - A holder usually writes many times with one token: the key is written only when its value
 *   changes (one redis.call less per write, about a fifth of the script's cost).
 */
const MARKS_LUA = `
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
local value = redis.call('GET', KEYS[1])
local written, read = false, false
if value then
  local comma = string.find(value, ',', 1, true)
  if comma then
    if comma > 1 then written = string.sub(value, 1, comma - 1) end
    read = string.sub(value, comma + 1)
  else
    written = value
  end
end
if written and lower(presented, written) then
  return {0, written}
end
`;

const RUN_COMMANDS_LUA = `
local replies = {1}
at = 4
for i = 1, count do
  local argc = tonumber(ARGV[at + 2])
  replies[i + 1] = redis.call(ARGV[at], KEYS[i + 1], unpack(ARGV, at + 3, at + 2 + argc))
  at = at + 3 + argc
end
`;

export const FENCE_LUA = `${MARKS_LUA}
if read and lower(presented, read) then
  return {3, read}
end

local count = tonumber(ARGV[3])
local at = 4
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
${RUN_COMMANDS_LUA}
if value ~= presented then redis.call('SET', KEYS[1], presented) end
return replies
`;

export const FENCE_READ_LUA = `${MARKS_LUA}
local count = tonumber(ARGV[3])
local at
${RUN_COMMANDS_LUA}
if ARGV[2] == '1' and (not read or lower(read, presented)) then
  redis.call('SET', KEYS[1], (written or '') .. ',' .. presented)
end
return replies
`;
