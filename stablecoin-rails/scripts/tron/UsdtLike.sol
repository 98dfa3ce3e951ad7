// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

/// A USDT-like TRC-20 token for the local TRON test node (tron-node/), executed as real
/// EVM bytecode on Anvil. Like TRON's USDT (TetherToken): 6 decimals, `transfer` /
/// `approve` / `transferFrom` returning true, `Transfer` and `Approval` events, `issue`
/// by the owner, and a revert when the balance is short. It is installed with
/// `anvil_setCode` at the 20-byte address of the mainnet USDT contract, so no constructor
/// runs: the owner is a constant (the node's issuer, THPvaUhoh2Qn2y9THCZML3H815hhFhn5YC).
contract UsdtLike {
    address public constant owner = 0x517591D35D313bf6A5e33098284502B045E2BC08;
    string public constant name = "Tether USD";
    string public constant symbol = "USDT";
    uint8 public constant decimals = 6;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed holder, address indexed spender, uint256 value);
    event Issue(uint256 amount);

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "insufficient allowance");
        if (allowed != type(uint256).max) {
            allowance[from][msg.sender] = allowed - value;
        }
        _transfer(from, to, value);
        return true;
    }

    function issue(uint256 amount) external {
        require(msg.sender == owner, "only owner");
        balanceOf[owner] += amount;
        totalSupply += amount;
        emit Issue(amount);
    }

    function _transfer(address from, address to, uint256 value) internal {
        require(to != address(0), "transfer to the zero address");
        uint256 held = balanceOf[from];
        require(held >= value, "insufficient balance");
        unchecked {
            balanceOf[from] = held - value;
        }
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
