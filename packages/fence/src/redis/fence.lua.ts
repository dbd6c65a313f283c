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
 * - Lua numbers are doubles and lose integers above 2^53, so tokens are compared as strings: a shorter
 *   canonical decimal is smaller, equal lengths compare digit by digit (bytes, not the locale-dependent
 *   string `<`). tonumber is used on counts only, never on tokens.
 * - Redis does not roll a script back after a failed redis.call, so everything checkable is checked
 *   before the first write (the key types here; command names and arity in JS), and the token is
 *   written last: a command that still fails mid-way leaves the token where it was.
 */
export const FENCE_LUA = `
local function lower(a, b)
  if #a ~= #b then return #a < #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end

local presented = ARGV[1]
local current = redis.call('GET', KEYS[1])
if current and lower(presented, current) then
  return {0, current}
end

local commands = {}
local at = 3
for i = 1, tonumber(ARGV[2]) do
  local argc = tonumber(ARGV[at + 2])
  commands[i] = {name = ARGV[at], keytype = ARGV[at + 1], args = {unpack(ARGV, at + 3, at + 2 + argc)}}
  at = at + 3 + argc
end

for i, command in ipairs(commands) do
  if command.keytype ~= 'any' then
    local actual = redis.call('TYPE', KEYS[i + 1])['ok']
    if actual ~= 'none' and actual ~= command.keytype then
      return {2, i, actual}
    end
  end
end

local replies = {1}
for i, command in ipairs(commands) do
  replies[i + 1] = redis.call(command.name, KEYS[i + 1], unpack(command.args))
end
redis.call('SET', KEYS[1], presented)
return replies
`;
