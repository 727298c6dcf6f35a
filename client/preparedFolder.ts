/**
 * The remote folder that quickLaunch.ts's launch script prepared when it could not start the
 * agent (files missing or changed), handed to deployAgent (deploy.ts) so that it neither probes
 * the folder again nor re-sends the files already in place. Its own module so that deploy.ts and
 * quickLaunch.ts both import it and never each other both ways.
 */

/**
 * What the launch script did for a deploy when files were missing or changed: the folder it made
 * (with the payload's subfolders), the files already in place (their sha256 matched), and the
 * subfolders it could not make.
 */
export interface PreparedFolder {
  remoteDir: string;
  present: Set<string>;
  mkdirFailed: string[];
  /** The host's platform as the launch script read it (deploy.ts PLATFORM_SH): linux-x64, linux-arm64, or '' (unknown: every file). */
  platform: string;
}
