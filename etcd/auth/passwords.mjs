// Passwords as etcd keeps them: bcrypt hashes ("$2a$", Go's
// x/crypto/bcrypt), at --bcrypt-cost (etcd's default 10; a cost outside
// bcrypt's 4..31 is etcd's default too). bcryptjs computes them in plain JS,
// in slices that let other work run in between.
import bcrypt from "bcryptjs";

export const DEFAULT_BCRYPT_COST = 10;
const MIN_COST = 4;
const MAX_COST = 31;

/** etcd's reading of --bcrypt-cost: out of range, the default. */
export const bcryptCost = (cost) => (Number.isInteger(cost) && cost >= MIN_COST && cost <= MAX_COST ? cost : DEFAULT_BCRYPT_COST);

/** The hash of `password` (a string, hashed as its UTF-8 bytes) at `cost`. */
export function hashPassword(password, cost) {
  const salt = new Uint8Array(16);
  crypto.getRandomValues(salt);
  // Go writes "$2a$", a two-digit cost and the salt in bcrypt's base64.
  const setting = `$2a$${String(cost).padStart(2, "0")}$${bcrypt.encodeBase64(salt, 16)}`;
  return bcrypt.hash(password, setting);
}

/** Whether `password` matches `hash` (bcrypt's comparison takes the same time however they differ). */
export async function checkPassword(password, hash) {
  try {
    return await bcrypt.compare(password, hash);
  } catch {
    return false;
  }
}

// A hash no password matches, for an unknown user: the answer takes as
// long as a known user's, so that it tells nobody which names exist.
let decoy = null;
export async function spendAsIfChecking(password, cost) {
  decoy ??= hashPassword("\0edge-lease decoy", cost);
  await checkPassword(password, await decoy);
  return false;
}
