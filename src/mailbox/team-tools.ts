/** The lead's team tools (docs/teams.md): `team_status` and `team_shutdown`, offered to agents that lead a team. */
import { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';
import { defineTool, toolFailure, unlisted } from '../tools/tool-contract.js';
import type { AvailabilityContext, GatewayTool, ToolContext } from '../ports/tools.js';
import { flag, text } from '../tools/schema.js';
import type { Teams } from './teams.js';

export function createTeamTools(teams: Teams): GatewayTool[] {
  const available = async (session: AvailabilityContext) => teams.ledBy(session.agentId).length > 0;
  /** The team named, or the one the agent leads when it leads one; an agent may act only on teams it leads. */
  const teamOf = (context: ToolContext, id: string | undefined) => {
    const led = teams.ledBy(context.agentId);
    if (id === undefined) {
      if (led.length === 1) return led[0].id;
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `you lead ${led.length} teams; name one with team (${led.map((team) => team.id).join(', ')})`,
      );
    }
    if (!led.some((team) => team.id === id))
      throw new SwitchboardError(
        'TOOL_DENIED',
        `you do not lead team "${id}" (you lead: ${led.map((team) => team.id).join(', ') || 'none'})`,
        {
          layer: 'tool',
        },
      );
    return id;
  };
  return [
    defineTool({
      name: 'team_status',
      description: "Your team's members: busy (with their task) or idle, and what each last finished; the board's task counts.",
      available,
      parameters: z.object({ team: unlisted(text().optional()) }),
      async execute(args, context) {
        try {
          return await teams.status(teamOf(context, args.team));
        } catch (error) {
          return toolFailure(error);
        }
      },
    }),
    defineTool({
      name: 'team_shutdown',
      description: 'Shut your team down: members take no new tasks and finish what they hold (release: true gives it back now).',
      effects: true,
      deferred: true,
      available,
      parameters: z.object({ team: unlisted(text().optional()), release: flag().optional() }),
      async execute(args, context) {
        try {
          const status = await teams.shutdown(teamOf(context, args.team), args.release === true);
          return { status: status.state, release: status.release, members: status.members };
        } catch (error) {
          return toolFailure(error);
        }
      },
    }),
  ];
}
