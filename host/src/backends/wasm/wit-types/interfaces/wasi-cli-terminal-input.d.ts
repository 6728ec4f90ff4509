/** @module Interface wasi:cli/terminal-input@0.2.12 **/

export class TerminalInput {
  /**
   * This type does not have a public constructor.
   */
  private constructor();
}
