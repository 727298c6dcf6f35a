/**
 * POSIX shell quoting for the command lines sent over SSH exec. The remote side runs the user's
 * login shell with `-c <line>`, so every path and argument we pass is single-quoted here and no
 * user input is ever interpolated into shell text unquoted.
 */

/**
 * Quotes one word for a POSIX shell: `'…'` with each `'` written as `'\''`. Words made only of
 * safe characters (`A-Za-z0-9_@%+=:,./-`, not starting with `-`) are returned as they are.
 * NUL cannot be passed through a shell and is rejected.
 * @throws Error when `word` contains NUL
 */
export function shellQuote(word: string): string {
  if (word.includes('\0')) throw new Error('a shell argument cannot contain NUL');
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./][A-Za-z0-9_@%+=:,./-]*$/.test(word)) return word;
  return "'" + word.replace(/'/g, "'\\''") + "'";
}

/** Joins argv into one shell command line, every word quoted with {@link shellQuote}. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
