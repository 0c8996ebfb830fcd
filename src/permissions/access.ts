// The derived can* checks of contract §3, for one visitor. Plain functions of plain rows:
// the schema, the REST adapter (through the schema) and the jobs all ask here.
import type { Permission } from './names.js';
import type { PermissionResolver } from './resolve.js';

/** The downloads a visitor may view, as data the statement compares with (canView of a download, as the search statement applies it). */
export interface DownloadVisibility {
  /** Categories where they hold `view`. */
  readonly categoryIds: readonly number[];
  /** Of those, where they also hold `viewModerated` and `viewDeleted`. */
  readonly moderatedIn: readonly number[];
  readonly deletedIn: readonly number[];
  /** Their user id: owners see their own moderated and draft downloads. 0 for the guest (who owns nothing). */
  userId: number;
}

export interface Visitor {
  /** 0 for the guest visitor. */
  userId: number;
  username: string;
  isSuper: boolean;
  isAdmin: boolean;
  isModerator: boolean;
  groupIds: number[];
  scopes: ReadonlySet<string>;
  apiKeyId: number;
}

type DownloadState = 'visible' | 'moderated' | 'deleted' | 'draft';
type CommentState = 'visible' | 'moderated' | 'deleted';

export interface CategoryRow {
  id: number;
}
export interface DownloadRow {
  id: number;
  categoryId: number;
  userId: number;
  state: DownloadState;
}
/**
 * The columns of a download these checks read (DownloadRow), in the datamodel's order: what a hand-written read
 * loads of a download needed only to check a permission.
 */
export const DOWNLOAD_PERMISSION_COLUMNS = [
  'id',
  'categoryId',
  'userId',
  'state',
] as const satisfies readonly (keyof DownloadRow)[];
export interface CommentRow {
  userId: number;
  state: CommentState;
}

export class Access {
  constructor(
    readonly visitor: Visitor,
    private readonly resolver: PermissionResolver | null,
  ) {}

  get isSuper(): boolean {
    return this.visitor.isSuper;
  }
  /** Moderators see downloads in every state in lists; everyone else is forced to `visible`. */
  get isModerator(): boolean {
    return this.visitor.isSuper || this.visitor.isModerator || this.visitor.isAdmin;
  }
  /** "Admin rights" for category writes and the admin mutations. */
  get hasAdminRights(): boolean {
    return this.visitor.isSuper || this.visitor.isAdmin;
  }

  has(perm: Permission, categoryId?: number | null): boolean {
    if (this.visitor.isSuper) return true;
    return this.resolver?.has(perm, categoryId) ?? false;
  }

  private owns(row: { userId: number }): boolean {
    return this.visitor.userId !== 0 && row.userId === this.visitor.userId;
  }

  canViewCategory(c: CategoryRow): boolean {
    return this.has('view', c.id);
  }
  canAddDownload(c: CategoryRow): boolean {
    return this.has('view', c.id) && this.has('add', c.id);
  }

  canViewDownload(d: DownloadRow): boolean {
    if (this.visitor.isSuper) return true;
    if (!this.has('view', d.categoryId)) return false;
    switch (d.state) {
      case 'visible':
        return true;
      case 'moderated':
        return this.owns(d) || this.has('viewModerated', d.categoryId);
      case 'deleted':
        return this.has('viewDeleted', d.categoryId);
      case 'draft':
        return this.owns(d);
    }
  }

  /**
   * canViewDownload as data for a statement (src/modules/downloads/search.ts): the categories where the visitor holds view, and of
   * those where they hold viewModerated and viewDeleted. null: every download (a super-user key).
   */
  downloadVisibility(): DownloadVisibility | null {
    if (this.visitor.isSuper) return null;
    const { categoryIds, moderatedIn, deletedIn } = this.resolver?.viewableCategories() ?? {
      categoryIds: [],
      moderatedIn: [],
      deletedIn: [],
    };
    // Named, not spread: a spread followed by a new key takes V8's slow path (src/graphql/context.ts).
    return { categoryIds, moderatedIn, deletedIn, userId: this.visitor.userId };
  }

  canEditDownload(d: DownloadRow, isTeamMember = false): boolean {
    if (!this.canViewDownload(d)) return false;
    return this.has('editAny', d.categoryId) || ((this.owns(d) || isTeamMember) && this.has('editOwn', d.categoryId));
  }

  canManageFiles(d: DownloadRow, isTeamMember = false): boolean {
    return this.canEditDownload(d, isTeamMember);
  }

  canDeleteDownload(d: DownloadRow): boolean {
    if (!this.canViewDownload(d)) return false;
    return this.has('deleteAny', d.categoryId) || (this.owns(d) && this.has('deleteOwn', d.categoryId));
  }

  canHardDeleteDownload(d: DownloadRow): boolean {
    return this.canViewDownload(d) && this.has('hardDeleteAny', d.categoryId);
  }
  canMoveDownload(d: DownloadRow): boolean {
    return this.has('moveAny', d.categoryId);
  }
  canDownload(d: DownloadRow): boolean {
    return this.canViewDownload(d) && this.has('download', d.categoryId);
  }
  canViewComments(d: DownloadRow): boolean {
    return this.canViewDownload(d) && this.has('viewComments', d.categoryId);
  }
  canComment(d: DownloadRow): boolean {
    return this.canViewComments(d) && this.has('comment', d.categoryId);
  }
  bypassesApproval(categoryId: number): boolean {
    return this.has('bypassApproval', categoryId);
  }
  bypassesCommentApproval(categoryId: number): boolean {
    return this.has('bypassCommentApproval', categoryId);
  }

  canViewComment(c: CommentRow, d: DownloadRow): boolean {
    if (this.visitor.isSuper) return true;
    if (!this.canViewComments(d)) return false;
    switch (c.state) {
      case 'visible':
        return true;
      case 'moderated':
        return this.owns(c) || this.has('viewModerated', d.categoryId);
      case 'deleted':
        return this.has('viewDeleted', d.categoryId);
    }
  }

  canEditComment(c: CommentRow, d: DownloadRow): boolean {
    if (!this.canViewComment(c, d)) return false;
    return this.has('editAnyComment', d.categoryId) || (this.owns(c) && this.has('editOwnComment', d.categoryId));
  }

  canDeleteComment(c: CommentRow, d: DownloadRow): boolean {
    if (!this.canViewComment(c, d)) return false;
    return this.has('deleteAnyComment', d.categoryId) || (this.owns(c) && this.has('deleteOwnComment', d.categoryId));
  }
}
