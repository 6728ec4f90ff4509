/** @module Interface wasi:cli/terminal-output@0.2.12 **/

export class TerminalOutput {
  /**
   * This type does not have a public constructor.
   */
  private constructor();
}
